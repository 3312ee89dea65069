"""Pulumi program: what one stack of a resumable profile deploys (resumable_pulumi/program.py ``deploy``).

The config keys are declared in Pulumi.yaml and documented in docs/pulumi.md; naming, validation
and the resources all live in the components, so a program of your own can do the same with
``from resumable_pulumi.program import deploy`` or the components themselves.
"""

from __future__ import annotations

from resumable_pulumi.program import deploy

deployment = deploy()
