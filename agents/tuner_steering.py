"""What the tuner reads from steering and advisor text: knob pins, classes to focus on, and a
line for the agent's log saying what it took.

A pin names a knob, by its full name (`medium.update_warps`) or its short one (`update_warps`:
every class that has it), then a value: `panel_width=64`, `panel_width: 64`, `set panel_width to
64`, or a pasted hypothesis (`all.panel_width: 32 → 64`, where the value after the arrow counts).
A bare `panel_width 64` pins nothing, since "avoid panel_width 16" reads the same way. A person's
text the tuner takes nothing from is said to be so, with the forms it reads: in a CPU session a
steer "try panel_width 64" was logged and then left unread, with no word of why. Advisor ideas,
mostly free text, get one line saying what was taken from them or that they were ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qrsup.agents.spaces import Point

_VALUE = r"([\w.\-\"']+)"
_THEN = r"(?:\s*(→|->|\s+to\s+)\s*" + _VALUE + ")?"
_SEPARATOR = r"\s*(?:=|:|→|->|\s+to\s+|\s+from\s+)\s*"


@dataclass(frozen=True)
class SteeringRead:
    """Pins and focus for the next proposal, and what to tell the person about them."""

    pins: Point
    focus: frozenset[str]
    notes: tuple[str, ...]
    advice: str = ""
    """What the tuner takes from the advisor's ideas, or that it ignores them; "" with none."""

    @property
    def transcript(self) -> str:
        lines = [f"steering: the tuner {note}" for note in self.notes]
        return "\n".join(lines + ([f"advisor: the tuner {self.advice}"] if self.advice else []))


def read_steering(
    steering: Sequence[str], ideas: Sequence[str], choices: Mapping[str, tuple[object, ...]]
) -> SteeringRead:
    """Everything usable in a person's `steering` and an advisor's `ideas`. The person's
    unusable text and unknown values are reported one by one; advisor prose mentions knobs
    freely, so its ideas get one line: what was taken from them, or that they were ignored."""
    classes = sorted({knob.split(".", 1)[0] for knob in choices})
    pins: Point = {}
    focus: set[str] = set()
    notes: list[str] = []
    taken_from_ideas: list[str] = []
    for text, from_person in [(t, True) for t in steering] + [(t, False) for t in ideas]:
        found, unknown = _pins(text, choices)
        named = {c for c in classes if re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", text)}
        pins.update(found)
        focus |= named
        if from_person:
            notes.extend(unknown)
            if not found and not named and not unknown:
                notes.append(_unread(text, choices, classes))
        else:
            taken_from_ideas += [f"{k}={v}" for k, v in found.items()]
            taken_from_ideas += [f"the class {c}" for c in sorted(named)]
    if pins:
        notes.append("pins " + ", ".join(f"{k}={v}" for k, v in sorted(pins.items())))
    if focus:
        notes.append("favours the classes " + ", ".join(sorted(focus)))
    advice = _advice(len(ideas), taken_from_ideas, choices, classes) if ideas else ""
    return SteeringRead(pins, frozenset(focus), tuple(notes), advice)


def _advice(
    count: int, taken: list[str], choices: Mapping[str, tuple[object, ...]], classes: list[str]
) -> str:
    ideas = f"the advisor's {count} idea{'s' if count > 1 else ''}"
    if taken:
        return f"takes {', '.join(dict.fromkeys(taken))} from {ideas}"
    return (
        f"ignores {ideas}: it cannot use free text, only {_forms(choices, classes)}; "
        "steer it with a pin to try one"
    )


def _pins(text: str, choices: Mapping[str, tuple[object, ...]]) -> tuple[Point, list[str]]:
    """The pins in one text, short names first so that full names override them, and a note
    for each named knob whose value it does not take."""
    short: dict[str, list[str]] = {}
    for knob in choices:
        short.setdefault(knob.split(".", 1)[-1], []).append(knob)
    pins: Point = {}
    unknown: list[str] = []
    for name, knobs in [*short.items(), *((k, [k]) for k in choices if "." in k)]:
        for raws in _values_after(name, text):
            raw = next(
                (r for r in raws if any(_coerce(r, choices[k]) is not None for k in knobs)), raws[0]
            )
            taken = {k: v for k in knobs if (v := _coerce(raw, choices[k])) is not None}
            pins.update(taken)
            if not taken:
                values = ", ".join(str(v) for v in choices[knobs[0]])
                unknown.append(f"ignores {name}={raw}: not one of its values ({values})")
    return pins, unknown


def _values_after(name: str, text: str) -> list[tuple[str, ...]]:
    """The raw values each mention of knob `name` may give it, the likelier first: after an
    arrow, the value it points to alone (`32 → 64`); after "to", that value, else the one before
    it, since "panel_width=64 to see" is prose."""
    pattern = rf"(?<![\w.]){re.escape(name)}(?![\w.]){_SEPARATOR}{_VALUE}{_THEN}"
    found = []
    for first, arrow, then in re.findall(pattern, text):
        first, then = _clean(first), _clean(then)
        if not arrow:
            found.append((first,))
        elif arrow.strip() == "to":
            found.append((then, first))
        else:
            found.append((then,))
    return found


def _clean(raw: str) -> str:
    return raw.strip("\"'").rstrip(".,")


def _coerce(raw: str, values: tuple[object, ...]) -> object | None:
    for value in values:
        if str(value).lower() == raw.lower():
            return value
    return None


def _unread(text: str, choices: Mapping[str, tuple[object, ...]], classes: list[str]) -> str:
    return f"takes nothing from {text!r}: it reads {_forms(choices, classes)}"


def _forms(choices: Mapping[str, tuple[object, ...]], classes: list[str]) -> str:
    example = next(iter(choices)).split(".", 1)[-1]
    return (
        f"knob=value pins ({example}=…, or CLASS.{example}=… for one class) "
        f"and class names ({', '.join(classes)})"
    )
