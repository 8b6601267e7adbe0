"""Helpers behind `SkillStore` (skills/api.py), the skill store's one face: callers use the face, never these."""
