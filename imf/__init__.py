"""imf: one-step iMF transformer policies for PushT, and the sweeps around them."""
__version__ = "0.1.0"
