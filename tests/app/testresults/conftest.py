from tests.app.conftest import pipeline, real_pipeline

__all__ = ["pipeline", "real_pipeline"]
