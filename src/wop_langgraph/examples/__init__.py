"""Small, model-free example graphs used by the demo, the notebooks and the tests."""
