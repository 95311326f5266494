"""Which kind of workload a prompt is, read from its text alone, as a drafter "sees" it.

A real draft model accepts more on code and repeated text than on open chat; the simulator
mimics that by giving each category its own accept length (`SimConfig.accept_by_category`). The
category is read from the prompt's content with the rules below, never from a marker only
specmon would send, so a user's own prompts of these kinds land in the same categories. The
first rule that matches wins:

1. repetitive: the text asks for text again: repeat, verbatim, copy out;
2. code: a ``` fence, or a word such as def, function, class, code, implement, python,
   javascript, rust, sql, regex, compile, bug;
3. math: a word such as solve, equation, integral, derivative, prove, calculate, compute, or
   digits joined by an operator ("3 + 4", "x^2 = 9", "12 - 5");
4. summarisation: summarise/summarize/summary or "tl;dr";
5. chat: the text ends with a question mark;
6. otherwise none: the configured `accept_length` applies.
"""

from __future__ import annotations

import re

CATEGORIES = ("code", "chat", "math", "summarisation", "repetitive")
DEFAULT_ACCEPT_BY_CATEGORY = {
    "code": 2.6,
    "chat": 1.95,
    "math": 2.2,
    "summarisation": 2.1,
    "repetitive": 3.6,
}
"""Accept lengths in the spread published for one model pair at 3-4 draft tokens (AIPerf's sets:
MT-Bench chat 1.95 to HumanEval code 2.62); repeated text drafts best of all."""

_REPEAT = re.compile(r"\b(repeat|verbatim|copy out)")
_CODE = re.compile(
    r"```|\b(def|function|class|code|implement|python|javascript|typescript|rust|sql|regex"
    r"|compiler?|bug)\b"
)
_MATH = re.compile(r"\b(solve|equation|integral|derivative|prove|calculate|compute)\b")
_ARITHMETIC = re.compile(r"\d\s*[+*/^=]\s*[\dx(]|\d\s+-\s+\d")
_SUMMARY = re.compile(r"\b(summari[sz]e|summary|tl;?dr)\b")


def classify_prompt(text: str) -> str | None:
    """The category of a prompt (module docstring's rules), or None when none matches."""
    lower = text.lower()
    if _REPEAT.search(lower):
        return "repetitive"
    if _CODE.search(lower):
        return "code"
    if _MATH.search(lower) or _ARITHMETIC.search(lower):
        return "math"
    if _SUMMARY.search(lower):
        return "summarisation"
    if lower.rstrip().endswith("?"):
        return "chat"
    return None
