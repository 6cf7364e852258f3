"""The LLM agents' jinja2 templates (README.md). A package only so that they ship in the wheel as its
data and are found through `importlib.resources`, installed or not (`leka/llm/prompting.py`); no code."""
