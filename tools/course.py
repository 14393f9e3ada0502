"""The course file: one small YAML file per course, read by ``make otter``, ``make grade`` and
``make gradebook`` (``COURSE=course.yml``; instructors/course.example.yml documents each key).

Standard library and PyYAML only, so that it imports in the readers' environment (.venv, where
``make otter`` and ``make gradebook`` run) and in the instructors' (.venv-otter, ``make grade``).
It imports none of the tools that read it.

The keys, all optional:

* ``exercises``: which exercises the assignments grade (``make otter``): chapters
  (``03_head_count``: all of it), exercise labels (``ex-build-heads``: every part) or question
  names (``ex3.4``, ``ex3.2-written``: that part). Without it, every exercise is graded;
* ``points``: a question's points (``ex3.4: 5``), or an exercise's (a label: split evenly
  between its code and its prose part, as the book splits them) (``make otter``);
* ``workers``: how many submissions ``make grade`` grades at once (``WORKERS=`` wins);
* ``show_hidden_after_due``: whether students see the hidden tests' results after the due
  date: ``make otter`` sets Otter's ``show_hidden`` (Gradescope shows them once grades are
  published), ``make grade`` writes the hidden cases' messages in full only once ``due`` has
  passed;
* ``extra_credit``, ``dropped``, ``weights``, ``due``, ``late_policy``: the gradebook's (``make
  gradebook``); ``make grade`` marks the dropped questions in its CSV.

Any other key, or a value of the wrong type, is refused with a :class:`CourseError` that names
the file and the key. Whether a name stands for a real chapter, exercise or question is checked
by the tool that knows them (``make otter`` the chapters', ``make grade`` and ``make gradebook``
the assignments').
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

KEYS = ("exercises", "points", "workers", "extra_credit", "dropped", "weights", "due", "late_policy",
        "show_hidden_after_due")


class CourseError(ValueError):
    """A course file that cannot be used; the message names the file and the key."""


@dataclass
class Course:
    exercises: list[str] | None = None        # chapters, labels or question names; None: every exercise
    points: dict[str, float] = field(default_factory=dict)   # question name or label -> points
    workers: int | None = None                # make grade's workers; None: its default
    extra_credit: list[str] | None = None     # names or labels; None: by stars
    extra_stars: tuple[int, ...] = (3,)
    dropped: list[str] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    due: dt.datetime | None = None
    per_day: float = 0.0
    max_days: int | None = None
    show_hidden_after_due: bool | None = None


def number(value) -> bool:
    """Whether ``value`` is a finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def when(value, where: str) -> dt.datetime:
    """An aware datetime from an ISO string or a YAML datetime; a time without zone is UTC."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise CourseError(f"{where}: {value!r} is not an ISO date and time "
                              "(expected e.g. 2026-12-01T17:00:00+01:00)") from None
        if "T" not in value and " " not in value.strip():
            raise CourseError(f"{where}: {value!r} has no time of day (expected e.g. 2026-12-01T23:59:00Z)")
    else:
        raise CourseError(f"{where}: expected an ISO date and time, e.g. 2026-12-01T17:00:00Z; got "
                          f"{type(value).__name__} {value!r}")
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _names(value, key: str, what: str = "question names or exercise labels (e.g. [ex3.4, ex-tail])") -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise CourseError(f"{key}: expected a list of {what}; got {value!r}")
    return [v.strip() for v in value]


def parse_course(data, where: str = "course.yml") -> Course:
    """A validated course configuration; any unknown key or wrong type is refused by name."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CourseError(f"{where}: expected a mapping of {', '.join(KEYS)}; got {type(data).__name__}")
    unknown = [str(k) for k in data if k not in KEYS]
    if unknown:
        raise CourseError(f"{where}: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(KEYS)}")
    course = Course()
    if "exercises" in data:
        course.exercises = _names(data["exercises"], f"{where}: exercises",
                                  "chapters, exercise labels or question names (e.g. [03_head_count, "
                                  "ex-tail, ex2.3])")
        if not course.exercises:
            raise CourseError(f"{where}: exercises: an empty list grades nothing; leave the key out to grade "
                              "every exercise")
    points = data.get("points") or {}
    if not isinstance(points, dict):
        raise CourseError(f"{where}: points: expected a mapping of question names or exercise labels to "
                          f"points (e.g. {{ex3.4: 5, ex-tail: 3}}); got {points!r}")
    for key, value in points.items():
        if not isinstance(key, str) or not key.strip():
            raise CourseError(f"{where}: points: {key!r}: expected a question name or exercise label "
                              "(e.g. ex3.4 or ex-tail)")
        if not number(value) or value <= 0:
            raise CourseError(f"{where}: points: {key}: expected a number > 0 (to grade a question for "
                              f"nothing, leave it out of exercises or drop it); got {value!r}")
    course.points = {k.strip(): value for k, value in points.items()}
    if data.get("workers") is not None:
        workers = data["workers"]
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise CourseError(f"{where}: workers: expected a whole number >= 1 (submissions graded at once); "
                              f"got {workers!r}")
        course.workers = workers
    if "extra_credit" in data:
        value = data["extra_credit"]
        if isinstance(value, dict):
            if set(value) != {"stars"}:
                raise CourseError(f"{where}: extra_credit: a mapping holds only 'stars' (e.g. {{stars: 3}}); "
                                  f"got {', '.join(map(str, value))}")
            stars = value["stars"] if isinstance(value["stars"], list) else [value["stars"]]
            if not stars or not all(s in (1, 2, 3) and not isinstance(s, bool) for s in stars):
                raise CourseError(f"{where}: extra_credit: stars: expected 1, 2 or 3 (or a list of them); "
                                  f"got {value['stars']!r}")
            course.extra_stars = tuple(sorted(set(stars)))
        else:
            course.extra_credit = _names(value, f"{where}: extra_credit")
    course.dropped = _names(data.get("dropped"), f"{where}: dropped")
    weights = data.get("weights") or {}
    if not isinstance(weights, dict):
        raise CourseError(f"{where}: weights: expected a mapping of chapter, question or label to a "
                          f"multiplier (e.g. {{03_head_count: 2}}); got {weights!r}")
    for key, value in weights.items():
        if not number(value) or value < 0:
            raise CourseError(f"{where}: weights: {key}: expected a number >= 0; got {value!r}")
    course.weights = {str(k): float(v) for k, v in weights.items()}
    if data.get("due") is not None:
        course.due = when(data["due"], f"{where}: due")
    if "late_policy" in data:
        policy = data["late_policy"]
        if not isinstance(policy, dict) or not set(policy) <= {"per_day", "max_days"} or "per_day" not in policy:
            raise CourseError(f"{where}: late_policy: expected {{per_day: fraction, max_days: days}} "
                              f"(max_days optional); got {policy!r}")
        if not number(policy["per_day"]) or not 0 <= policy["per_day"] <= 1:
            raise CourseError(f"{where}: late_policy: per_day: expected a fraction from 0 to 1; "
                              f"got {policy['per_day']!r}")
        days = policy.get("max_days")
        if days is not None and (not isinstance(days, int) or isinstance(days, bool) or days < 0):
            raise CourseError(f"{where}: late_policy: max_days: expected a whole number of days >= 0; "
                              f"got {days!r}")
        if course.due is None:
            raise CourseError(f"{where}: late_policy needs due (the due date and time)")
        course.per_day, course.max_days = float(policy["per_day"]), days
    if "show_hidden_after_due" in data:
        if not isinstance(data["show_hidden_after_due"], bool):
            raise CourseError(f"{where}: show_hidden_after_due: expected true or false; "
                              f"got {data['show_hidden_after_due']!r}")
        course.show_hidden_after_due = data["show_hidden_after_due"]
    return course


def read_course(path: Path) -> Course:
    """The course file at ``path``, parsed and checked (:func:`parse_course`)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CourseError(f"--course: {path} cannot be read ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise CourseError(f"--course {path}: not valid YAML ({error})") from None
    return parse_course(data, str(path))
