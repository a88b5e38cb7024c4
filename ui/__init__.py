"""The Gradio app."""

__all__: list[str] = []
