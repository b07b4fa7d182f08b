from debates.cli.main import main

main()
