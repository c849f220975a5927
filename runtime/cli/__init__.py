"""The runtime's commands of `mcpgen`: `inspect`, `call`, `logout` (`commands`, answering the
server's questions at a terminal with `prompts`) and `serve` (`serve`). `mcpgen` finds them through
the `mcpgen.commands` entry points."""
