/* tunlessctl import: wg-quick INI -> tunless host-mode YAML. */
#ifndef TL_CLI_IMPORT_H
#define TL_CLI_IMPORT_H

/* argv[0] is "import"; returns the exit status. */
int ctl_import_main(int argc, char **argv);

#endif
