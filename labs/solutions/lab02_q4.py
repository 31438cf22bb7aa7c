# Round the shared prompt down to whole blocks: the tokens after its last full block share a block
# with each request's own tokens, so that block's hash differs from request to request.
full_tokens = (part.prefix_len // B) * B
answer = (part.num_prompts - 1) * full_tokens
