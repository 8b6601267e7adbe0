"""The skill store's face beside `SkillStore` (skills/api.py): the types, constants and helpers its callers use."""
