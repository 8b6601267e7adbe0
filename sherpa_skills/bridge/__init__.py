"""The agent bridge: the store for the agents people already run.

hook_install (live-capture hooks merged into Claude Code's settings.json and Codex's hooks.json), agent_skills
(procedures written as Agent Skills SKILL.md folders and read back), match_answer and mcp_server (the MCP server).
"""
