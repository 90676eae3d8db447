"""Policy networks: the transformer, the image observation encoder, and the weight EMA."""
from imf.model.ema import EMAModel
from imf.model.encoder import ObsEncoder
from imf.model.layers import forward_ad_active
from imf.model.transformer import ImfTransformer, attention_masks

__all__ = ["EMAModel", "ImfTransformer", "ObsEncoder", "attention_masks", "forward_ad_active"]
