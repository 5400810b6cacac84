"""The prompt sandbox: Jinja's sandbox with no other templates to load and a bound on every render (its time,
the prompt's length, and the size of every string, list and number a template builds), so that a hostile or
mistaken template fails fast with a clear message instead of hanging or exhausting memory."""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

from jinja2 import StrictUndefined, nodes
from jinja2.exceptions import TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment

# An honest prompt renders in microseconds; a render still running after this is a runaway loop or recursion.
RENDER_SECONDS = 1.0
# The longest prompt, and the longest string or list (or the largest count or width) a template may build or pass.
MAX_CHARS = 16_384
# The largest integer a template may compute, in bits (about 77 decimal digits).
MAX_INT_BITS = 256
# The most characters a value passed to a filter, call or output may hold once written out, counted through its
# nested lists and mappings (a list of 16,000 references to one 16,000-character string is 256 million).
MAX_DEEP_CHARS = 4 * MAX_CHARS
# Statements that reach other templates: a prompt is self-contained and the sandbox has no loader.
FORBIDDEN = {nodes.Include: "{% include %}", nodes.Import: "{% import %}", nodes.FromImport: "{% from %}",
             nodes.Extends: "{% extends %}"}
_LOOP = "_focus_loop"  # the filter every {% for %} iterable passes through
_CHECKED = "_focus_checked"  # the filter every ~ concatenation passes through
_SIZED = "_focus_sized"  # the filter every operand of a ~ concatenation passes through before it is written out
_NUMBER = re.compile(r"\d+")


class RenderLimit(Exception):
    """A render passed one of the bounds; the message says which."""


class PromptSandbox(SandboxedEnvironment):
    """A SandboxedEnvironment whose templates count their loop steps and calls against a deadline and check
    the size of what their operators, filters and calls produce."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                         finalize=_sized)
        self._state = threading.local()
        self.filters = {name: _bounded_filter(self, f) for name, f in self.filters.items()}
        self.filters[_LOOP] = self._loop
        self.filters[_CHECKED] = self.checked
        self.filters[_SIZED] = _sized

    # -- compile time: forbid other templates, route loops and concatenations through the checks --------------
    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for kind, statement in FORBIDDEN.items():
            for node in tree.find_all(kind):
                raise TemplateSyntaxError(f"{statement} is not allowed in a prompt (a prompt is one self-contained "
                                          "template)", node.lineno, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Filter(loop.iter, _LOOP, [], [], None, None, lineno=loop.lineno)
        for parent in list(tree.find_all(nodes.Node)):
            for field in parent.fields:
                value = getattr(parent, field)
                if isinstance(value, nodes.Concat):
                    value.nodes = [nodes.Filter(v, _SIZED, [], [], None, None, lineno=v.lineno) for v in value.nodes]
                    setattr(parent, field, nodes.Filter(value, _CHECKED, [], [], None, None, lineno=value.lineno))
                elif isinstance(value, list):
                    for v in value:
                        if isinstance(v, nodes.Concat):
                            v.nodes = [nodes.Filter(n, _SIZED, [], [], None, None, lineno=n.lineno) for n in v.nodes]
                    value[:] = [nodes.Filter(v, _CHECKED, [], [], None, None, lineno=v.lineno)
                                if isinstance(v, nodes.Concat) else v for v in value]
        tree.set_environment(self)
        return tree

    # -- render time -----------------------------------------------------------------------------------------
    def tick(self) -> None:
        deadline = getattr(self._state, "deadline", None)
        if deadline is not None and time.monotonic() > deadline:
            raise RenderLimit(f"rendering took longer than {RENDER_SECONDS:g} s (a loop or recursion far too large "
                              "for a prompt)")

    def checked(self, value: Any) -> Any:
        """``value`` once the deadline and its size are checked; a lazy result (``map``, ``select``, a
        generator) is checked item by item as it is consumed (``_counted``)."""
        self.tick()
        if isinstance(value, (str, list, tuple, dict, set, frozenset)) and len(value) > MAX_CHARS:
            raise RenderLimit(f"a value of {len(value)} items or characters was built (at most {MAX_CHARS})")
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
            raise RenderLimit(f"a number above 2**{MAX_INT_BITS} was computed")
        if isinstance(value, Iterator) and not isinstance(value, _Counted):
            return _Counted(value, self)
        return value

    def _loop(self, iterable: Any):
        for item in iterable:
            self.tick()
            yield item

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 (Jinja's own)
        __self.tick()
        _check_arguments([*args, *kwargs.values()])
        _check_growth(getattr(__obj, "__name__", ""), getattr(__obj, "__self__", None), args, kwargs)
        return __self.checked(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        # ``value`` is a str's format or format_map method: its size is checked before it formats anything
        text, name = value.__self__, value.__name__
        _check_format(text)

        @functools.wraps(wrapped)
        def checked(*args: Any, **kwargs: Any) -> str:
            _check_growth(name, text, args, kwargs)
            return wrapped(*args, **kwargs)

        return checked

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        self.tick()
        if operator == "*":
            _check_product(left, right)
        elif operator == "**":
            _check_power(left, right)
        elif operator == "%" and isinstance(left, str):
            _check_format(left)
            _check_growth("format", left, (right,), {})
        return self.checked(super().call_binop(context, operator, left, right))

    def render(self, template: Any, context: dict[str, Any]) -> str:
        """``template`` rendered with ``context`` within the bounds (a RenderLimit names the bound passed)."""
        self._state.deadline = time.monotonic() + RENDER_SECONDS
        try:
            parts, size = [], 0
            for part in template.generate(**context):
                size += len(part)
                if size > MAX_CHARS:
                    raise RenderLimit(f"the prompt grew past {MAX_CHARS} characters")
                parts.append(part)
            return "".join(parts)
        finally:
            self._state.deadline = None


class _Counted(Iterator):
    """A lazy result whose items are counted as they are made: the deadline is checked for each, and once the
    items made so far would write out to more than MAX_DEEP_CHARS characters the render stops, so that
    ``items|map(...)|list`` or a join over a generator is refused while it builds, not after."""

    def __init__(self, items: Iterator, env: PromptSandbox):
        self.items, self.env, self.size, self.count = items, env, 0, 0

    def __next__(self) -> Any:
        self.env.tick()
        item = next(self.items)
        self.count += 1
        self.size += deep_chars(item) + 2
        if self.size > MAX_DEEP_CHARS or self.count > MAX_CHARS:
            raise RenderLimit(f"a sequence of {self.count} items holding more than {MAX_DEEP_CHARS} characters "
                              f"(or more than {MAX_CHARS} items) was being built")
        return item


def _bounded_filter(env: PromptSandbox, function: Callable) -> Callable:
    """``function`` (a Jinja filter) with its numeric arguments and its result checked."""
    # a filter marked pass_context / pass_environment / pass_eval_context gets that object first
    skip = 2 if getattr(function, "jinja_pass_arg", None) is not None else 1

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        env.tick()
        _check_arguments([*args[skip:], *kwargs.values()])
        if function.__name__ == "do_format" and len(args) >= skip and isinstance(args[skip - 1], str):
            _check_format(args[skip - 1])
        if len(args) >= skip:
            _check_growth(function.__name__.removeprefix("do_"), args[skip - 1], args[skip:], kwargs)
        return env.checked(function(*args, **kwargs))

    return bounded


def _check_arguments(values: list[Any]) -> None:
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_CHARS:
            raise RenderLimit(f"the number {value} was passed to a call or filter (at most {MAX_CHARS}: counts and "
                              "widths beyond a prompt's length are refused)")


def _check_format(text: str) -> None:
    """A format string whose widths or precisions could exceed a prompt's length is refused."""
    if any(int(number) > MAX_CHARS for number in _NUMBER.findall(text)):
        raise RenderLimit(f"a format string with a width or precision above {MAX_CHARS}")


def _check_product(left: Any, right: Any) -> None:
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, list, tuple)) and isinstance(count, int):
            if len(sequence) * count > MAX_CHARS:
                raise RenderLimit(f"a repetition of {len(sequence)} x {count} items (at most {MAX_CHARS})")
    if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
        raise RenderLimit(f"a product above 2**{MAX_INT_BITS}")


def _check_power(base: Any, exponent: Any) -> None:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if base.bit_length() * exponent > MAX_INT_BITS:
            raise RenderLimit(f"a power above 2**{MAX_INT_BITS}")
    elif isinstance(exponent, (int, float)) and abs(exponent) > MAX_INT_BITS:
        raise RenderLimit(f"an exponent above {MAX_INT_BITS}")


def deep_chars(value: Any, budget: int = MAX_DEEP_CHARS) -> int:
    """About how many characters ``value`` holds once written out, through nested lists, tuples, sets and
    mappings; the count stops soon after passing ``budget`` (so a huge value costs no more than a small one)."""
    total, stack = 0, [value]
    while stack and total <= budget:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += 2 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 * len(item)
            stack.extend(item)
        else:
            total += 8
    return total


def _sized(value: Any) -> Any:
    """``value`` unchanged, once it is known not to write out to more than MAX_DEEP_CHARS characters."""
    if isinstance(value, (str, list, tuple, dict, set, frozenset)):
        size = deep_chars(value)
        if size > MAX_DEEP_CHARS:
            raise RenderLimit(f"a value of more than {MAX_DEEP_CHARS} characters (counted through its nested "
                              "items) was to be written out or passed on")
    return value


# growing filters that write a value that is not a string out before they work on it
_STRINGIFYING = frozenset({"replace", "indent", "format"})


def _growth(name: str, subject: Any, args: tuple, kwargs: dict) -> int | None:
    """The size of what a string-growing filter or method will build, worked out before it runs; None for
    operations that cannot build much more than their inputs. The filters among these write a value that is no
    string out first (``[x] * 300 | replace(...)`` replaces in the list's text), so that text is what grows; it
    was checked by ``_sized`` before, so writing it out here is cheap."""
    if not isinstance(subject, str):
        if name not in _STRINGIFYING:
            return None
        subject = str(subject)
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        old, new = args[0], args[1]
        count = len(subject) + 1 if old == "" else subject.count(old)
        return len(subject) + count * max(0, len(new) - len(old))
    if name == "indent":
        width = args[0] if args else kwargs.get("width", 4)
        return len(subject) + (subject.count("\n") + 1) * (width if isinstance(width, int) else len(str(width)))
    if name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        return len(subject) + subject.count("\t") * (size if isinstance(size, int) else 8)
    if name in ("format", "format_map"):
        pieces = subject.count("%") + subject.count("{")
        return len(subject) + pieces * sum(deep_chars(a) for a in (*args, *kwargs.values()))
    return None


def _lorem_size(args: tuple, kwargs: dict) -> int:
    """The fewest characters ``lipsum(n, html, min, max)`` writes: ``n`` paragraphs of at least ``min`` (and
    up to ``max``) words of three or more letters and a space."""
    named = dict(zip(("n", "html", "min", "max"), args), **kwargs)
    counts = [named.get("n", 5), named.get("min", 20), named.get("max", 100)]
    if not all(isinstance(c, int) for c in counts):
        return 0
    n, low, high = counts
    return max(0, n) * max(low, min(high, MAX_CHARS)) * 4


def _check_growth(name: str, subject: Any, args: tuple, kwargs: dict) -> None:
    """Refuse, before it runs, an operation whose inputs or result would pass the bounds."""
    for value in (subject, *args, *kwargs.values()):
        _sized(value)
    if name == "generate_lorem_ipsum" and _lorem_size(args, kwargs) > MAX_CHARS:  # the lipsum() global
        raise RenderLimit(f"lipsum would build more than {MAX_CHARS} characters")
    if name == "join" and isinstance(subject, str) and args:  # str.join(items): the separator is the subject
        items = args[0]
        if isinstance(items, (list, tuple)) and deep_chars(items) + len(subject) * len(items) > MAX_CHARS:
            raise RenderLimit(f"a join of {len(items)} items would pass {MAX_CHARS} characters")
        return
    if name == "join" and isinstance(subject, (list, tuple)):  # the join filter: the items are the subject
        separator = args[0] if args and isinstance(args[0], str) else str(kwargs.get("d", ""))
        if deep_chars(subject) + len(separator) * len(subject) > MAX_CHARS:
            raise RenderLimit(f"a join of {len(subject)} items would pass {MAX_CHARS} characters")
        return
    size = _growth(name, subject, args, kwargs)
    if size is not None and size > MAX_CHARS:
        raise RenderLimit(f"{name} would build {size} characters (at most {MAX_CHARS})")
