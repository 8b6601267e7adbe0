"""What a `{{ name }}` parameter is in a stored procedure: one definition for capture, matching, mining and replay."""

from __future__ import annotations

import re

#: A parameter: a name (letter or underscore first) in double braces. Any other brace text (`{{ .Name }}`,
#: `awk '{{print}}'`) is the command's own and stays literal.
PARAMETER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
