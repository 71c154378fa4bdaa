from agentrel.harness.cli.main import main

main()
