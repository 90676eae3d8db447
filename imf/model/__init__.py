"""Policy networks: the transformer, the image observation encoder, and the weight EMA."""
from imf.model.ema import EMAModel
from imf.model.encoder import ObsEncoder, crop_images
from imf.model.layers import forward_ad_active
from imf.model.transformer import ImfTransformer, attention_masks

# crop_images: benchmarks/speed/loader_speed.py crops as the encoder does, outside it
__all__ = ["EMAModel", "ImfTransformer", "ObsEncoder", "attention_masks", "crop_images", "forward_ad_active"]
