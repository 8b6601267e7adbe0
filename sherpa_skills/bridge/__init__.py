"""The agent bridge: the store for the agents people already run.

hook_install (live-capture hooks merged into Claude Code's settings.json and Codex's hooks.json), agent_skills
(procedures written as Agent Skills SKILL.md folders and read back), match_answer, and the MCP server: mcp_server
(its tools), mcp_contract (their closed schemas) and mcp_app (procedures as resources, malformed lines answered).
"""
