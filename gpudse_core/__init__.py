"""gpudse: regression-based GPU design space exploration (Stargazer, Lee & Brooks, Zatel).

The core package: all logic, no user interface. The Streamlit dashboard (``app.py``, ``pages/``)
and the ``gpudse`` command line are thin layers over it.

Data flows one way: design space (:mod:`.space`, :mod:`.presets`) → samples (:mod:`.sampling`) →
results → stepwise fit → analyses.
"""

__version__ = "0.1.0"

from .errors import ExpressionError, GpudseError, SamplingError, SpaceError  # noqa: E402
from .presets import PRESETS, load_preset, load_space  # noqa: E402
from .sampling import SampleSet, sample, sample_size  # noqa: E402
from .space import Constraint, DesignSpace, Fixed, Group, Parameter, parse_space_text, space_from_dict  # noqa: E402

__all__ = [
    "__version__", "GpudseError", "SpaceError", "ExpressionError", "SamplingError", "PRESETS", "load_preset",
    "load_space", "SampleSet", "sample", "sample_size", "Constraint", "DesignSpace", "Fixed", "Group",
    "Parameter", "parse_space_text", "space_from_dict",
]
