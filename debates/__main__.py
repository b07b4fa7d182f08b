from debates.cli import main

main()
