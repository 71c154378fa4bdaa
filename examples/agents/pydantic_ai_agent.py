"""A minimal agent on Pydantic AI (`pip install 'pydantic-ai-slim[openai,mcp]'`), audited by AgentRel.

    agentrel audit --agent pai='python examples/agents/pydantic_ai_agent.py' --tasks csm-double-charge

It reads AgentRel's environment contract (docs/how-to/your-own-agent.md): the run's MCP endpoint and
bearer token, the two prompt files, and where to write its token usage. Its model is AgentRel's model
proxy (`--agent-model`): AGENTREL_MODEL_BASE_URL, AGENTREL_MODEL_API_KEY (a per-run token, not a key) and
AGENTREL_MODEL, an OpenAI-compatible Chat Completions endpoint. Try it without any key:

    agentrel audit --agent pai='python examples/agents/pydantic_ai_agent.py' \
        --agent-model scripted/oracle --tasks csm-double-charge

Without --agent-model it calls OPENAI_BASE_URL with OPENAI_API_KEY and AGENT_MODEL (default gpt-4o-mini).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


async def main() -> None:
    system = Path(os.environ["AGENTREL_SYSTEM_PROMPT_FILE"]).read_text(encoding="utf-8")
    user = Path(os.environ["AGENTREL_USER_PROMPT_FILE"]).read_text(encoding="utf-8")
    # AgentRel's model proxy when the audit gives one (its tokens and cost then measured by AgentRel).
    base_url = os.environ.get("AGENTREL_MODEL_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    api_key = os.environ.get("AGENTREL_MODEL_API_KEY") or os.environ["OPENAI_API_KEY"]
    model_name = os.environ.get("AGENTREL_MODEL") or os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    tools = MCPToolset(
        os.environ["AGENTREL_MCP_URL"],
        headers={"Authorization": f"Bearer {os.environ['AGENTREL_MCP_TOKEN']}"},
        tool_error_behavior="failed",  # a failed tool call is shown to the model, which decides what next
    )
    provider = OpenAIProvider(base_url=base_url, api_key=api_key)
    agent = Agent(OpenAIChatModel(model_name, provider=provider), system_prompt=system, toolsets=[tools])
    async with agent:
        result = await agent.run(user)
    usage = result.usage() if callable(result.usage) else result.usage
    Path(os.environ["AGENTREL_USAGE_FILE"]).write_text(
        json.dumps(
            {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "model": model_name}
        )
    )
    # The answer the task's user gets: judged like a model's last message (a `REFUSAL:` line counts).
    Path(os.environ["AGENTREL_FINAL_MESSAGE_FILE"]).write_text(str(result.output), encoding="utf-8")
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
