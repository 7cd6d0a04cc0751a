"""A JAX program for `memplace import-xla tests.xla_example_program:forward` (issue 20's
`pkg.mod:fn` form): the module says which shapes it is compiled for."""
import jax
import jax.numpy as jnp


def forward(w, x):
    return jnp.tanh(x @ w).sum(axis=0)


forward.example_args = (jax.ShapeDtypeStruct((16, 8), jnp.float32),
                        jax.ShapeDtypeStruct((4, 16), jnp.float32))
