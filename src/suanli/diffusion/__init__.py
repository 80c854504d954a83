"""Image generation: text-to-image pipelines (Stable Diffusion 1.5, SDXL, SD3, Flux) counted layer
by layer from their real diffusers and transformers configs.

Each component (text encoders, the UNet or diffusion transformer, the VAE) is walked once at a
resolution and batch (:mod:`suanli.diffusion.graph`): the walk yields its parameters, every GEMM
and convolution as a GEMM shape, every attention call, the element-wise memory traffic and the
largest set of live activations. The speed model times those ops with the card's kernel model;
nothing here imports torch.
"""
