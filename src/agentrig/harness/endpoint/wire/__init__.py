"""The three provider wire formats the endpoint speaks."""
