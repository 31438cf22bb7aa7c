# One layer keeps, for every token, a key and a value (x2) for each KV head, head_dim numbers each.
# The query heads do not matter: grouped-query attention shares each KV head among several of them.
answer = 2 * shape["num_key_value_heads"] * shape["head_dim"] * per_number
