"""`ask_user_to_approve`: an approval hook that asks the user of the client making the call.

    server = MCPToolServer(with_policies(toolset, ApprovalPolicy(hook=ask_user_to_approve)))

The hook asks through `current_call().elicit(...)`: served by `MCPToolServer`, the question
goes to the client's user (an `elicitation/create` request in the handshake era, an
`input_required` round in the 2026-07-28 era). Only an explicit yes approves: the user
accepting with `approve` ticked. Declining, cancelling, unticking, a client that cannot ask
(no elicitation), a call that is not served over MCP, or a question that fails, all deny.
"""

from __future__ import annotations

import json
from typing import Any

from kosong.standard import current_call
from kosong.standard.policies import ApprovalDecision, ApprovalRequest
from kosong.tooling.error import describe_exception

__all__ = ["ask_user_to_approve"]

_SHOWN = 500
"""Characters of the arguments shown in the question (the rest is cut: a form, not a log)."""


def _question(request: ApprovalRequest) -> tuple[str, dict[str, Any]]:
    tool = request.tool
    arguments = json.dumps(request.arguments, ensure_ascii=False, sort_keys=True)
    if len(arguments) > _SHOWN:
        arguments = arguments[: _SHOWN - 3] + "..."
    what = f"{tool.title} (`{tool.name}`)" if tool.title else f"`{tool.name}`"
    message = f"Allow {what} to run with {arguments}?"
    schema = {
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": "Approve",
                "description": f"Run {tool.name} with these arguments",
            }
        },
        "required": ["approve"],
    }
    return message, schema


async def ask_user_to_approve(request: ApprovalRequest) -> ApprovalDecision:
    """Ask the user whether the call may run; anything but an explicit yes denies it.

    An `ApprovalHook` for `ApprovalPolicy(hook=ask_user_to_approve)`; see the module doc.
    """
    call = current_call()
    if call is None:
        return ApprovalDecision.deny("no user can be asked: the call runs outside a pipeline")
    message, schema = _question(request)
    try:
        answer = await call.elicit(message, schema)
    except Exception as e:  # an answer that does not fit, a failed question: no
        return ApprovalDecision.deny(f"the user could not be asked ({describe_exception(e)})")
    if answer.action == "decline":
        return ApprovalDecision.deny("the user declined (or could not be asked)")
    if answer.action == "cancel":
        return ApprovalDecision.deny("the user dismissed the question")
    if (answer.content or {}).get("approve") is not True:
        return ApprovalDecision.deny("the user did not approve")
    return ApprovalDecision.approve("the user approved")
