/* The built-in default profile (etc/profiles/h100.yaml) embedded at build
 * time, NUL-terminated so it can be handed to C string code.
 * DEFAULT_PROFILE_PATH is the quoted path, defined by supervisor/local.am. */

	.section .rodata
	.global compile_default_profile
	.type compile_default_profile, @object
	.balign 16
compile_default_profile:
	.incbin DEFAULT_PROFILE_PATH
compile_default_profile_end:
	.byte 0
	.size compile_default_profile, . - compile_default_profile

	.global compile_default_profile_len
	.type compile_default_profile_len, @object
	.balign 8
compile_default_profile_len:
#if __SIZEOF_SIZE_T__ == 8
	.quad compile_default_profile_end - compile_default_profile
#else
	.long compile_default_profile_end - compile_default_profile
#endif
	.size compile_default_profile_len, . - compile_default_profile_len

	.section .note.GNU-stack,"",@progbits
