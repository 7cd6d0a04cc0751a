from memplace.cli.main import main

main()
