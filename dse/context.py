"""One run's shared facts, built once per explore and passed to every stage (sweep, finish, report, comparison).

Before, each stage rebuilt what it needed from the spec: the design space twice, the evaluation
fingerprint twice, the workload graph again for the GPU comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

from dse.graph import Graph
from dse.objectives import Constraint, Objective
from dse.space import DesignSpace
from dse.spec import Spec


@dataclass(frozen=True)
class RunContext:
    """The spec with its design space, fingerprint, objectives, constraints and (when built) workload graph.

    ``graph`` is None where no stage evaluates anything (``dse report``): the GPU comparison then builds it.
    """

    spec: Spec
    space: DesignSpace
    fingerprint: str
    objectives: tuple[Objective, ...]
    constraints: tuple[Constraint, ...]
    graph: Graph | None = None

    @classmethod
    def of(cls, spec: Spec, space: DesignSpace | None = None, graph: Graph | None = None) -> RunContext:
        """The context of ``spec``: its own design space unless ``space`` narrows it (tests, benchmarks)."""
        return cls(
            spec=spec,
            space=space if space is not None else DesignSpace.from_spec(spec),
            fingerprint=spec.evaluation_fingerprint(),
            objectives=tuple(spec.objective_list()),
            constraints=tuple(spec.constraint_list()),
            graph=graph,
        )

    @property
    def evaluator_name(self) -> str:
        """The spec's ``evaluator:``, stored with every point."""
        return str(self.spec.evaluator)

    @property
    def free_names(self) -> list[str]:
        """The free parameters, in the space's order."""
        return [dim.name for dim in self.space.free]

    @property
    def param_names(self) -> list[str]:
        """Free parameters first, then the fixed ones: the column order of the points frame."""
        free = self.free_names
        return free + [name for name in self.space.fixed if name not in free]
