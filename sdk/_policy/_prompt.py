"""The default prompt the summary model is given: a setting's value, apart from its users."""

from __future__ import annotations

__all__ = ["DEFAULT_SUMMARY_PROMPT"]

DEFAULT_SUMMARY_PROMPT = """\
You are compacting the history of a long-running agent session. The messages below are being \
removed from the agent's context (they stay archived and searchable). Write what the agent \
needs to continue the work without them, in exactly these three sections:

## Session intent
What the user asked for and any constraints or preferences they stated, in their own words \
where it matters.

## Summary
What was done, found and decided, in order: commands run and their outcomes, errors and how \
they were fixed, facts learned about the code or environment, open questions. Be specific: \
keep file paths, function names, identifiers, numbers and error messages exactly.

## Next steps
What remains to be done, starting with what the agent was doing when the history was cut.

Write only these sections, in English, with no preamble.

<messages>
{messages}
</messages>"""
"""The default prompt; ``{messages}`` is replaced by the rendered messages
(:func:`ctxfs._summary._body.render_for_model`)."""
