"""The workspace's guidance file: standing instructions every agent re-reads each iteration.

A person edits it (`guidance.md` by default, `[guidance] file` in qrsup.toml) while agents run;
each iteration's prompt carries it as it is then. Unlike steering it is never consumed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

MAX_CHARS = 6000


@dataclass
class Guidance:
    """Reads the file each time and says when it changed since the last read."""

    path: Path | None
    digest: str = hashlib.sha256(b"").hexdigest()[:12]  # no guidance yet

    def read(self) -> tuple[str, bool]:
        """The text (empty without a file) and whether it differs from the last read."""
        text = ""
        if self.path is not None:
            try:
                text = self.path.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                text = ""
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        changed, self.digest = digest != self.digest, digest
        return text[:MAX_CHARS], changed
