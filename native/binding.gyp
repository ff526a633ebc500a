{
  "targets": [
    {
      "target_name": "remessa_native",
      "sources": ["module.c", "sendfile.c", "memory.c", "writeback.c", "hashwrite.c", "accept.c", "limits.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"],
      "conditions": [["OS!='linux'", { "type": "none", "sources": [] }]]
    }
  ]
}
