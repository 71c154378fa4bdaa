"""`python -m agentrel`: the same CLI as the `agentrel` command."""

from agentrel.harness.cli.main import main

main()
