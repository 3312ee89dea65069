"""The directory ``resumable launch`` puts first on PYTHONPATH: its ``sitecustomize`` is the start-up
hook of the training processes (a package only so that installs ship it)."""
