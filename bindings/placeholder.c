/* Placeholder so the bindings library is never empty; removed when bindings/ lands. */
int lop_lua_placeholder(void);
int lop_lua_placeholder(void) { return 0; }
