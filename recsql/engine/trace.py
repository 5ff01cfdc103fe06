"""What EXPLAIN ANALYZE reports: the facts each relation derived, per iteration for recursive ones, and
the time each step took."""

from __future__ import annotations

from dataclasses import dataclass, field

from recsql.engine.progress import Progress, ProgressListener


@dataclass(frozen=True)
class Step:
    relations: tuple[str, ...]
    iteration: int | None  # None: a non-recursive relation; 0: a recursion's exit rules
    facts: dict[str, int]  # new facts per relation
    seconds: float


@dataclass
class Trace:
    steps: list[Step] = field(default_factory=list)
    restarts: list[str] = field(default_factory=list)  # why the evaluation started again, each time
    notes: list[str] = field(default_factory=list)  # what else happened (a component handed over)

    def record(self, step: Step) -> None:
        self.steps.append(step)

    def progress(self, event: Progress) -> None:
        """An iteration of a recursion as a step (events tell the time since the recursion started; the
        iterations reported with it, derived by one query, take that time with the first). Its exit rules
        mean an evaluation from the start: the steps of one before it, which outgrew this process and
        starts again elsewhere, are dropped (one going on from where it stopped keeps them)."""
        first = event.iteration - len(event.earlier)
        if first == 0:
            self.forget(event.relations)
        # the parts of a decomposed recursion report their own elapsed times: one may report less than another had
        seconds = max(event.elapsed - self.elapsed_in(event.relations), 0.0)
        for offset, facts in enumerate((*event.earlier, event.facts)):
            step = Step(event.relations, first + offset, dict(facts), 0.0 if offset else seconds)
            self.record(step)

    def restart(self, reason: str) -> None:
        """The whole evaluation starts again: what it recorded so far is gone."""
        self.steps.clear()
        self.restarts.append(reason)

    def forget(self, relations: tuple[str, ...]) -> None:
        """Drop the steps of a component whose evaluation starts again (elsewhere)."""
        self.steps = [step for step in self.steps if step.relations != relations]

    def elapsed_in(self, relations: tuple[str, ...]) -> float:
        """Time recorded so far for the component of `relations` (progress events report it cumulatively)."""
        return sum(step.seconds for step in self.steps if step.relations == relations)

    def facts_per_relation(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for step in self.steps:
            for name, facts in step.facts.items():
                totals[name] = totals.get(name, 0) + facts
        return totals

    def report(self) -> list[str]:
        """Lines naming the program's relations as EXPLAIN prints them."""
        lines = ["== Analyze =="]
        for step in self.steps:
            names = ", ".join(step.relations)
            facts = ", ".join(f"{r} +{n}" for r, n in step.facts.items())
            if step.iteration is None:
                lines.append(f"{names}: {sum(step.facts.values())} facts, {step.seconds:.3f} s")
            else:
                label = "exit rules" if step.iteration == 0 else f"iteration {step.iteration}"
                lines.append(f"{names} {label}: {facts}, {step.seconds:.3f} s")
        totals = self.facts_per_relation()
        lines.append("facts per relation: " + ", ".join(f"{r} {n}" for r, n in totals.items()))
        lines.append(f"total derived facts: {sum(totals.values())}")
        lines.append(f"total time: {sum(step.seconds for step in self.steps):.3f} s")
        lines += self.notes
        lines += [f"started again: {reason}" for reason in self.restarts]
        return lines


def listening(trace: Trace | None, progress: ProgressListener | None) -> ProgressListener | None:
    """The listener of a recursion's progress that tells EXPLAIN ANALYZE's trace and `progress`."""
    if trace is None:
        return progress

    def listener(event: Progress) -> None:
        trace.progress(event)
        if progress is not None:
            progress(event)

    return listener
