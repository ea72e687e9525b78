"""hoglab: product analytics and A/B-experiment analysis from Python notebooks."""

__version__ = "0.1.0"
__all__ = ["__version__"]
