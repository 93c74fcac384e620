from topoopt.cli import main

main()
