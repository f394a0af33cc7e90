"""The notes of one poll of the probe folder: each file's problem said once, and a folder full of
bad files said in one line.

Without this, 10,000 leftover or corrupt files give 10,000 notes in one poll, which bury
everything else the status line and ``check``'s notes have to say. Up to `SUMMARY_AFTER` new
notes of a kind group are passed as they are; more become one summary with counts per reason
and the first note in full. A file's note is remembered while the file is there (a file that
comes back after it was gone is said again), so memory stays bounded by the folder.
"""

from __future__ import annotations

__all__ = ["SKIPPED", "SUMMARY_AFTER", "USED", "ProbeNotes"]

#: More new notes than this, of one group, in one poll become one summary line.
SUMMARY_AFTER = 5

#: Reasons a file was skipped -> how the summary counts them.
SKIPPED: dict[str, str] = {
    "exited": "of exited processes",
    "corrupt": "corrupt",
    "refused": "refused",
    "unreadable": "unreadable",
}
#: Reasons a file was used with a note -> how the summary counts them.
USED: dict[str, str] = {
    "figures": "with impossible figures (dropped)",
    "namespace": "of a PID not visible here",
}


class ProbeNotes:
    """Collects one poll's notes (`add`), then gives them grouped (`finish`)."""

    def __init__(self) -> None:
        self._said: dict[str, dict[str, str]] = {}  # path -> {key: kind}
        self._new: list[tuple[str, str]] = []
        self._present: set[str] = set()

    def begin(self) -> None:
        self._new = []
        self._present = set()

    def present(self, path: str) -> None:
        """``path`` is in the folder this poll: what was said about it stays said."""
        self._present.add(path)

    def add(self, path: str, kind: str, text: str, key: str | None = None) -> None:
        """Note ``text`` about ``path`` unless it was said already (``key``, else the text,
        tells notes apart: a figure that changes value is not said again)."""
        said = self._said.setdefault(path, {})
        key = text if key is None else key
        if key in said:
            return
        said[key] = kind
        self._present.add(path)
        self._new.append((kind, text))

    def usable(self, path: str) -> None:
        """``path`` gave a sample: why it was skipped before is forgotten (said again if it
        happens again)."""
        said = self._said.get(path)
        if said:
            for key in [k for k, kind in said.items() if kind in SKIPPED]:
                del said[key]

    def finish(self) -> list[str]:
        """This poll's notes, in order, each group summarised when it is long."""
        for path in [p for p in self._said if p not in self._present]:
            del self._said[path]
        known = SKIPPED.keys() | USED.keys()
        notes = [text for kind, text in self._new if kind not in known]
        for reasons, verb in ((SKIPPED, "skipped"), (USED, "used with a note")):
            group = [(kind, text) for kind, text in self._new if kind in reasons]
            if len(group) <= SUMMARY_AFTER:
                notes.extend(text for _, text in group)
                continue
            counts = [
                f"{sum(1 for kind, _ in group if kind == reason):,} {words}"
                for reason, words in reasons.items()
                if any(kind == reason for kind, _ in group)
            ]
            notes.append(
                f"{len(group):,} probe files {verb}: {', '.join(counts)}; first: {group[0][1]}"
            )
        self._new = []
        return notes
