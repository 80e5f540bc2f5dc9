"""Judge backends, one module each, registered in `harness.components.registry.JUDGES`
and chosen with `judge.backend` (see `harness.components.contract.JudgeModule`)."""
