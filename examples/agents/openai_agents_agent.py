"""A minimal agent on the OpenAI Agents SDK (`pip install openai-agents`), audited by AgentRel.

    agentrel audit --agent sdk='python examples/agents/openai_agents_agent.py' --tasks csm-double-charge

It reads AgentRel's environment contract (docs/how-to/your-own-agent.md): the run's MCP endpoint and
bearer token, the two prompt files, and where to write its token usage. Its model is AgentRel's model
proxy (`--agent-model`): AGENTREL_MODEL_BASE_URL, AGENTREL_MODEL_API_KEY (a per-run token, not a key) and
AGENTREL_MODEL, an OpenAI-compatible Chat Completions endpoint. Try it without any key:

    agentrel audit --agent sdk='python examples/agents/openai_agents_agent.py' \
        --agent-model scripted/oracle --tasks csm-double-charge

Without --agent-model it calls OPENAI_BASE_URL with OPENAI_API_KEY and AGENT_MODEL (default gpt-4o-mini).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI


async def main() -> None:
    set_tracing_disabled(True)  # no trace upload: the run's record is AgentRel's
    system = Path(os.environ["AGENTREL_SYSTEM_PROMPT_FILE"]).read_text(encoding="utf-8")
    user = Path(os.environ["AGENTREL_USER_PROMPT_FILE"]).read_text(encoding="utf-8")
    # AgentRel's model proxy when the audit gives one (its tokens and cost then measured by AgentRel).
    base_url = os.environ.get("AGENTREL_MODEL_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    api_key = os.environ.get("AGENTREL_MODEL_API_KEY") or os.environ["OPENAI_API_KEY"]
    model_name = os.environ.get("AGENTREL_MODEL") or os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    client = AsyncOpenAI(base_url=base_url, api_key=api_key)
    tools = MCPServerStreamableHttp(
        params={
            "url": os.environ["AGENTREL_MCP_URL"],
            "headers": {"Authorization": f"Bearer {os.environ['AGENTREL_MCP_TOKEN']}"},
            "timeout": 30,
        },
        cache_tools_list=True,
        client_session_timeout_seconds=30,
    )
    async with tools:
        agent = Agent(
            name="agentrel-example",
            instructions=system,
            mcp_servers=[tools],
            model=OpenAIChatCompletionsModel(model=model_name, openai_client=client),
        )
        result = await Runner.run(agent, user, max_turns=30)
    usage = result.context_wrapper.usage
    Path(os.environ["AGENTREL_USAGE_FILE"]).write_text(
        json.dumps(
            {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "model": model_name}
        )
    )
    # The answer the task's user gets: judged like a model's last message (a `REFUSAL:` line counts).
    Path(os.environ["AGENTREL_FINAL_MESSAGE_FILE"]).write_text(str(result.final_output), encoding="utf-8")
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
