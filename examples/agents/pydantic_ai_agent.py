"""A minimal agent on Pydantic AI (`pip install 'pydantic-ai-slim[openai,mcp]'`), audited by AgentRel.

    agentrel audit --agent pai='python examples/agents/pydantic_ai_agent.py' --tasks csm-double-charge

It reads AgentRel's environment contract (docs/how-to/your-own-agent.md): the run's MCP endpoint and
bearer token, the two prompt files, and where to write its token usage. Its model is any OpenAI-compatible
Chat Completions endpoint: OPENAI_BASE_URL, OPENAI_API_KEY, AGENT_MODEL (default gpt-4o-mini).
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
    model_name = os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    tools = MCPToolset(
        os.environ["AGENTREL_MCP_URL"],
        headers={"Authorization": f"Bearer {os.environ['AGENTREL_MCP_TOKEN']}"},
        tool_error_behavior="failed",  # a failed tool call is shown to the model, which decides what next
    )
    provider = OpenAIProvider(
        base_url=os.environ.get("OPENAI_BASE_URL"), api_key=os.environ["OPENAI_API_KEY"]
    )
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
