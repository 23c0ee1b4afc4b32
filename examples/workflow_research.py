"""A three-stage research workflow: plan, research, synthesize, resumable from its state file.

Each stage is its own agent in its own context: it gets its prompt, the task, the earlier
stages' validated outputs (within a token budget) and nothing else. The researcher stores its
raw material in the workspace and names it in ``raw_data_refs``, so the synthesizer (or a
person) can read the source text. Everything lands in the workspace::

    /sessions/<id>.json                 the state file (human-readable, editable)
    /sessions/<id>/stages/NN-<stage>.json   each validated output
    /research/...                       the raw material

Offline by default: each stage's model is a scripted chat model. To plug a real model, pass
any LangChain chat model (``--model openai:gpt-4.1-mini`` goes through
``langchain.chat_models.init_chat_model``; it needs the provider package and its API key)::

    python examples/workflow_research.py --workspace ./research-ws --model openai:gpt-4.1-mini

A run that was killed resumes from its first incomplete stage; so does one halted by an
invalid output, once the output is fixed in the state file::

    ctxfs session show ./research-ws
    ctxfs session resume ./research-ws <id> --workflow examples/workflow_research.py:build_workflow
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from ctxfs import Workspace
from ctxfs.testing import ScriptedChatModel
from ctxfs.workflows import Stage, StageInput, Workflow, WorkflowPolicy, model_agent

TASK = "Should our team move the nightly settlement job from cron to an event queue?"

SOURCES = {
    "incident-2026-03.md": "The 31 March run started at 00:00 UTC, 02:00 local: the ledger "
    "had not closed, so 412 payments were settled twice.\n",
    "queue-trial.md": "A two-week trial on the event queue settled every batch once the "
    "ledger-closed event arrived; median delay 4 minutes, no duplicates.\n",
    "ops-survey.md": "On-call engineers rate the cron job's retries as the main source of "
    "pages (7 of 9 answers).\n",
}


def _scripted(stage: str) -> ScriptedChatModel:
    """An offline model for one stage: it replies from what it was sent."""

    def reply(messages: Sequence[BaseMessage]) -> str:
        sent = messages[-1].text
        if stage == "planner":
            output: dict[str, Any] = {
                "summary": "Compare the March incident, the queue trial and on-call feedback.",
                "key_findings": [],
                "confidence": "high",
                "next_stage_recommendations": [f"read {name}" for name in SOURCES],
            }
        elif stage == "researcher":
            stored = [line.split(": ", 1)[1] for line in sent.splitlines() if "stored: " in line]
            output = {
                "summary": "Cron fired before the ledger closed; the queue trial had no "
                "duplicates.",
                "key_findings": [
                    {"fact": "412 payments settled twice on 31 March", "source": stored[0]},
                    {"fact": "the queue trial settled every batch once", "source": stored[1]},
                ],
                "confidence": "medium",
                "next_stage_recommendations": ["weigh the 4-minute delay against duplicates"],
                "raw_data_refs": stored,
            }
        else:
            output = {
                "summary": "Move to the event queue: it removes double settlement "
                "(412 payments in March) for a median 4-minute delay.",
                "key_findings": [
                    {"fact": "cron ignores the ledger close", "source": "researcher"},
                ],
                "confidence": "high" if "confidence: medium" in sent else "medium",
            }
        return json.dumps(output)

    return ScriptedChatModel(responses=[reply], script_id=stage)


def build_workflow(workspace: Workspace, model: BaseChatModel | None = None) -> Workflow:
    """The research workflow on ``workspace``; ``model`` for every stage, or scripted ones.

    ``ctxfs session resume URL ID --workflow examples/workflow_research.py:build_workflow``
    calls it with the workspace alone.
    """

    def ask(stage: str) -> Any:
        return model_agent(model if model is not None else _scripted(stage))

    researcher_model = ask("researcher")

    def research(stage_input: StageInput) -> Any:
        # Real tools would fetch these; the raw text goes to the workspace, not the context.
        lines = []
        for name, text in SOURCES.items():
            path = f"/research/{stage_input.workflow_id}/{name}"
            workspace.write_text(path, text)
            lines.append(f"stored: {path}")
            stage_input.checkpoint(f"stored {path}")
        sources = "\n".join(lines)
        task = f"{stage_input.task}\n\nSources:\n{sources}"
        return researcher_model(dataclasses.replace(stage_input, task=task))

    return Workflow(
        stages=[
            Stage(name="planner", prompt="Plan the research: what to read.", agent=ask("planner")),
            Stage(
                name="researcher",
                prompt="Read the sources; report facts with their source paths.",
                agent=research,
            ),
            Stage(
                name="synthesizer",
                prompt="Recommend a decision from the research.",
                agent=ask("synthesizer"),
            ),
        ],
        workspace=workspace,
        policy=WorkflowPolicy(previous_outputs_tokens=2_000),
    )


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the workflow; returns the synthesizer's summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="memory://workflow-research", metavar="URL")
    parser.add_argument("--workflow-id", default="settlement-queue", metavar="ID")
    parser.add_argument("--model", metavar="PROVIDER:NAME", help="a real chat model")
    args = parser.parse_args(argv)

    model: BaseChatModel | None = None
    if args.model:
        from langchain.chat_models import init_chat_model

        model = init_chat_model(args.model)
    workspace = Workspace(args.workspace)
    run = build_workflow(workspace, model).run(TASK, workflow_id=args.workflow_id)
    print(f"{run.workflow_id}: {run.status}; state file {run.state_path}")
    for name, output in run.outputs.items():
        print(f"  {name}: {output.model_dump()['summary']}")
    if run.halt is not None:
        print(f"halted at {run.halt.stage}:\n{run.halt.error}")
        return ""
    return str(run.outputs["synthesizer"].model_dump()["summary"])


if __name__ == "__main__":
    main()
