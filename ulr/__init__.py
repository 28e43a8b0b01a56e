"""ulr: unbiased learning to rank workbench.

Computation only: this package never imports streamlit. The dashboard pages
collect input, call functions here and draw what they return.
"""

__version__ = "0.1.0"
