"""Label taxonomies of the benchmarks we support, each with an explicit misinformation map.

Datasets disagree on what their labels mean, so every label says outright whether it counts as
misinformation. Metrics collapse any taxonomy onto that binary view through this map alone.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from m3d_agents.errors import InputError


class Taxonomy(BaseModel):
    """A named label set; ``misinformation[label]`` is the binary collapse of each label."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    misinformation: dict[str, bool]
    true_label: str | None = None
    """For fact-check ratings, the label that says the claim is true: AgentFact scores its binary view
    as this label against every other (false and unproven alike), which differs from the
    misinformation view where unproven is not misinformation."""

    @model_validator(mode="after")
    def _non_empty(self) -> "Taxonomy":
        if not self.misinformation:
            raise ValueError(f"taxonomy {self.name!r} has no labels")
        if self.true_label is not None and self.true_label not in self.misinformation:
            raise ValueError(f"taxonomy {self.name!r}: true_label {self.true_label!r} is not one of its labels")
        return self

    @property
    def labels(self) -> list[str]:
        return list(self.misinformation)

    def normalise(self, label: str) -> str:
        """Map a spelling variant (case, spaces, hyphens) onto the canonical label."""
        key = label.strip().lower().replace("-", "_").replace(" ", "_")
        for known in self.misinformation:
            if known.lower() == key:
                return known
        raise ValueError(f"label {label!r} is not in taxonomy {self.name!r} ({', '.join(self.labels)})")

    def is_misinformation(self, label: str) -> bool:
        return self.misinformation[self.normalise(label)]


TAXONOMIES: dict[str, Taxonomy] = {
    t.name: t
    for t in [
        Taxonomy(
            name="m3d",
            description="MMFakeBench: which modality, if any, carries the distortion.",
            misinformation={
                "original": False,
                "textual_veracity_distortion": True,
                "visual_veracity_distortion": True,
                "cross_modal_consistency_distortion": True,
            },
        ),
        Taxonomy(
            name="ooc",
            description="NewsCLIPpings out-of-context: is the image used with a caption that fits it?",
            misinformation={"pristine": False, "falsified": True},
        ),
        Taxonomy(
            name="factcheck",
            description=(
                "RW-Post style fact-check ratings. 'mixture' and 'outdated' mislead a reader and count"
                " as misinformation; 'unproven' is not shown to be false and does not."
            ),
            misinformation={
                "true": False,
                "false": True,
                "unproven": False,
                "mixture": True,
                "outdated": True,
            },
            true_label="true",
        ),
        Taxonomy(
            name="factcheck3",
            description=(
                "AgentFact's answer set: the three fact-check ratings it predicts. A subset of 'factcheck',"
                " so its answers are scored on RW-Post's labels unchanged."
            ),
            misinformation={"true": False, "false": True, "unproven": False},
            true_label="true",
        ),
        Taxonomy(
            name="amg",
            description=(
                "AMG: real posts plus five kinds of forgery, as the AMG and T2Agent papers list them: a fabricated"
                " image, an image that is no evidence for the text, and an entity, event or time inconsistency."
            ),
            misinformation={
                "real": False,
                "image_fabrication": True,
                "non_evidential_image": True,
                "entity_inconsistency": True,
                "event_inconsistency": True,
                "time_inconsistency": True,
            },
        ),
        Taxonomy(
            name="binary",
            description="Real or fake (MediaEval, FakeSV, FakeTT, FakeVV).",
            misinformation={"real": False, "fake": True},
        ),
    ]
}


def get_taxonomy(name: str) -> Taxonomy:
    try:
        return TAXONOMIES[name]
    except KeyError:
        raise InputError("taxonomy", f"unknown taxonomy {name!r}; known: {', '.join(TAXONOMIES)}") from None


def is_subset(source: Taxonomy, target: Taxonomy) -> bool:
    """Whether every label of ``source`` is a label of ``target`` with the same misinformation flag.

    Such answers need no bridge: ``factcheck3``'s ``unproven`` is RW-Post's ``unproven``.
    """
    return all(target.misinformation.get(label) is flag for label, flag in source.misinformation.items())


def collapse_label(label: str, source: Taxonomy, target: Taxonomy) -> str:
    """Carry a label of ``source`` over to ``target`` through the binary misinformation map.

    Systems that answer in a finer taxonomy (the cascade answers in m3d) are scored on datasets with
    a two-label one (binary, ooc); the only honest bridge is whether the label is misinformation,
    so a target needs exactly one label on each side. A taxonomy whose labels all belong to the
    target (``factcheck3`` in ``factcheck``) is carried over label for label.
    """
    label = source.normalise(label)
    if source.name == target.name:
        return label
    if is_subset(source, target):
        return target.normalise(label)
    sides = {flag: [name for name, misinfo in target.misinformation.items() if misinfo == flag] for flag in (False, True)}
    if len(sides[False]) != 1 or len(sides[True]) != 1:
        raise ValueError(
            f"answers in {source.name!r} cannot be carried over to {target.name!r}: only taxonomies with one"
            " misinformation label and one other label can take them"
        )
    return sides[source.is_misinformation(label)][0]
