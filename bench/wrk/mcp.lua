-- wrk script: MCP `tools/call` POSTs, each with its own JSON-RPC id, and a check of every answer.
--
--   wrk -t1 -c50 -d5s -s bench/wrk/mcp.lua http://127.0.0.1:PORT/mcp -- modern TOOL
--   wrk -t1 -c50 -d5s -s bench/wrk/mcp.lua http://127.0.0.1:PORT/mcp -- handshake TOOL SESSION_ID...
--
-- modern: self-contained POSTs (protocol version and capabilities in `_meta`, the routing headers).
-- handshake: calls that carry one of the given session ids (opened beforehand: initialize, then
-- notifications/initialized), in turn. An answer counts as bad unless it is a 200 whose body (JSON
-- or SSE) holds a result and no error. At the end one line:
-- `mcpbench REQUESTS BAD_ANSWERS MICROSECONDS SOCKET_ERRORS`.

local threads = {}

function setup(thread)
   thread:set("first", #threads * 1000000000)
   table.insert(threads, thread)
end

local MODERN = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"a":1,"b":2},'
   .. '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
   .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'
local HANDSHAKE = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"a":1,"b":2}}}'

local era, tool, sessions, headers, next_id

function init(args)
   era, tool = args[1], args[2]
   sessions = {}
   for i = 3, #args do
      sessions[#sessions + 1] = args[i]
   end
   headers = {
      ["Host"] = wrk.headers["Host"],
      ["Content-Type"] = "application/json",
      ["Accept"] = "application/json, text/event-stream",
   }
   if era == "modern" then
      headers["Mcp-Protocol-Version"] = "2026-07-28"
      headers["Mcp-Method"] = "tools/call"
      headers["Mcp-Name"] = tool
   else
      headers["Mcp-Protocol-Version"] = "2025-11-25"
      assert(#sessions > 0, "handshake era: give the session ids after the tool")
   end
   next_id = first or 0
   bad = 0
end

function request()
   next_id = next_id + 1
   if era == "modern" then
      return wrk.format("POST", nil, headers, string.format(MODERN, next_id, tool))
   end
   headers["Mcp-Session-Id"] = sessions[next_id % #sessions + 1]
   return wrk.format("POST", nil, headers, string.format(HANDSHAKE, next_id, tool))
end

function response(status, _, body)
   if status ~= 200 or not body:find('"result"', 1, true) or body:find('"error"', 1, true)
      or body:find('"isError":true', 1, true) or body:find('"isError": true', 1, true) then
      bad = bad + 1
   end
end

function done(summary)
   local total = 0
   for _, thread in ipairs(threads) do
      total = total + thread:get("bad")
   end
   local e = summary.errors
   io.write(string.format("mcpbench %d %d %d %d\n", summary.requests, total, summary.duration,
      e.connect + e.read + e.write + e.timeout))
end
