"""kmc.specs: each model's properties as plain Python functions, one module per model named after
it, named by the model's spec_modules."""
