"""One conversation, sent by every provider: its request bodies are in `fixtures/`.

A user asks with an image; the assistant thinks, says a word and calls two tools in parallel;
one tool answers with two text parts and a screenshot (a data URL), the other with text.
"""

from __future__ import annotations

from kosong.message import ImageURLPart, Message, TextPart, ThinkPart, ToolCall
from kosong.tooling import Tool

SYSTEM = "You are a careful assistant."
QUESTION = "What is on the home page? Also add 1 and 2."
LOGO = "https://example.com/logo.png"
SCREENSHOT_DATA = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwAD"
    "hgGAWjR9awAAAABJRU5ErkJggg=="
)
SCREENSHOT = f"data:image/png;base64,{SCREENSHOT_DATA}"
"""A 1x1 PNG (70 bytes)."""

SCREENSHOT_TOOL = Tool(
    name="screenshot",
    description="Take a screenshot of a page.",
    parameters={
        "type": "object",
        "properties": {"page": {"type": "string"}},
        "required": ["page"],
    },
)
ADD_TOOL = Tool(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
TOOLS = [SCREENSHOT_TOOL, ADD_TOOL]
WEB_SEARCH = Tool(name="$web_search", description="", parameters={})

CALLS = [
    ToolCall(
        id="call_1", function=ToolCall.FunctionBody(name="screenshot", arguments='{"page": "home"}')
    ),
    ToolCall(id="call_2", function=ToolCall.FunctionBody(name="add", arguments='{"a": 1, "b": 2}')),
]


def user(text: str = "Hi") -> list[Message]:
    return [Message(role="user", content=text)]


def conversation(
    thinking: ThinkPart | None = None, calls: list[ToolCall] | None = None
) -> list[Message]:
    """The whole conversation; `thinking` is the assistant's thinking part (its provider's),
    `calls` its two calls (with the provider's extras)."""
    think = thinking or ThinkPart(think="Two tools.")
    return [
        Message(
            role="user",
            content=[
                TextPart(text=QUESTION),
                ImageURLPart(image_url=ImageURLPart.ImageURL(url=LOGO)),
            ],
        ),
        Message(
            role="assistant", content=[think, TextPart(text="Looking.")], tool_calls=calls or CALLS
        ),
        Message(
            role="tool",
            tool_call_id="call_1",
            content=[
                TextPart(text="Hello"),
                TextPart(text="world"),
                ImageURLPart(image_url=ImageURLPart.ImageURL(url=SCREENSHOT)),
            ],
        ),
        Message(role="tool", tool_call_id="call_2", content="3"),
    ]
