"""Views of an answer for a program to read instead of a person: a plan turned into the files
a scheduler runs (Slurm batch scripts, Kubernetes and Kubeflow manifests).

A view takes a finished answer and formats it, as ``cli/`` and ``web/`` do; it never estimates
again. It sits above ``answers/`` and below the front-ends that offer it (``suanli plan --emit``).
"""
