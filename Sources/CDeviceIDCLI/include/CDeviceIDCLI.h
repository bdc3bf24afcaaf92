#ifndef CDEVICEID_CLI_H
#define CDEVICEID_CLI_H
// The command line, as the C runtime handed it to the program. Embedded Swift has no
// `CommandLine`; glibc passes argc and argv to every .init_array function, which keeps them here.

/// The number of arguments, the program name included.
int dids_cli_argc(void);
/// Argument `index` (0 is the program name), or NULL past the end.
const char *dids_cli_argument(int index);

#endif
