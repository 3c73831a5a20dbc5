"""Who a connection is and what it may do: principals, authentication and authorization."""
