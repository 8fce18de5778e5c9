"""vertexbatch.emulator: a local Vertex AI batch-prediction service on a real fake-gcs-server.

The real `aiplatform_v1`, `google-genai` and `google-cloud-storage` clients drive it unchanged.
See docs/local-stack.md for the directives, faults and options.
"""

from vertexbatch.emulator._catalogue import DEFAULT_MODELS
from vertexbatch.emulator._faults import Faults
from vertexbatch.emulator._foreground import run_foreground
from vertexbatch.emulator._locations import DEFAULT_LOCATIONS
from vertexbatch.emulator._options import JobOptions, Timing
from vertexbatch.emulator._stack import LocalStack

__all__ = [
    "DEFAULT_LOCATIONS",
    "DEFAULT_MODELS",
    "Faults",
    "JobOptions",
    "LocalStack",
    "Timing",
    "run_foreground",
]
