"""`python -m sherpa_skills` is the `sherpa-skills` command."""

import sys

from .cli.main import main

sys.exit(main())
