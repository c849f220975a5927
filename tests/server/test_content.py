"""Images, audio and files from handlers, with one helper each, the same in both eras."""

from __future__ import annotations

import base64

import pytest
from mcpgen.runtime import Audio, File, Image, Server
from support.peers import connected

pytestmark = pytest.mark.anyio
MODES = ["handshake", "auto"]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
WAV = b"RIFF" + bytes(range(64))
PDF = b"%PDF-1.7\n" + bytes(range(200, 256))


def make_server() -> Server:
    server = Server("media")

    @server.tool()
    def picture() -> Image:
        return Image(PNG, "image/png")

    @server.tool()
    def sound() -> Audio:
        return Audio(WAV, "audio/wav")

    @server.tool()
    def report() -> File:
        return File(PDF, "application/pdf", name="report.pdf")

    @server.tool()
    def raw() -> bytes:
        return b"\x00\xff\x10"

    @server.tool()
    def mixed() -> list[str | Image | File]:
        return ["the chart:", Image(PNG), File("a,b\n1,2\n", "text/csv", name="table.csv")]

    @server.prompt()
    def look() -> list[str | Image]:
        return ["What is in this picture?", Image(PNG, "image/png")]

    @server.resource("media://logo")
    def logo() -> Image:
        return Image(PNG, "image/png")

    return server


def decoded(data: str) -> bytes:
    return base64.b64decode(data)


@pytest.mark.parametrize("mode", MODES)
async def test_tools_return_images_audio_files_and_bytes(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        tools = {tool.name: tool async for tool in client.tools()}
        assert all(tool.output_schema is None for tool in tools.values()), "content, not structured output"

        image = (await client.call_tool("picture")).content[0]
        assert (image.type, image.mime_type, decoded(image.data)) == ("image", "image/png", PNG)
        audio = (await client.call_tool("sound")).content[0]
        assert (audio.type, audio.mime_type, decoded(audio.data)) == ("audio", "audio/wav", WAV)
        report = (await client.call_tool("report")).content[0]
        assert report.type == "resource"
        assert report.resource.uri == "file:///report.pdf" and report.resource.mime_type == "application/pdf"
        assert decoded(report.resource.blob) == PDF
        raw = (await client.call_tool("raw")).content[0]
        assert raw.type == "resource" and raw.resource.mime_type == "application/octet-stream"
        assert decoded(raw.resource.blob) == b"\x00\xff\x10"

        mixed = (await client.call_tool("mixed")).content
        assert [block.type for block in mixed] == ["text", "image", "resource"]
        assert mixed[0].text == "the chart:" and decoded(mixed[1].data) == PNG
        assert mixed[2].resource.text == "a,b\n1,2\n" and mixed[2].resource.mime_type == "text/csv"


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_and_resources_take_the_helpers_too(mode: str) -> None:
    async with connected(make_server(), mode=mode) as client:
        prompt = await client.get_prompt("look")
        assert [m.content.type for m in prompt.messages] == ["text", "image"]
        assert decoded(prompt.messages[1].content.data) == PNG
        read = await client.read_resource("media://logo")
        assert read.contents[0].mime_type == "image/png" and decoded(read.contents[0].blob) == PNG


def test_a_file_names_its_uri() -> None:
    assert File(b"x", "application/pdf").resource_uri == "file:///file.pdf"
    assert File(b"x", name="my report.txt").resource_uri == "file:///my%20report.txt"
    assert File(b"x", uri="s3://bucket/key").resource_uri == "s3://bucket/key"
